# kwp lab run too-large: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/too-large.png'
set title 'requests at an RV ahead of the server: seconds until the answer (a watch: how long it stayed silent)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics
set key below
set yrange [0:*]
set ylabel 'seconds'
plot 'docs/lab/too-large.dat' using 2:xtic(1) title 'server', '' using 3 title 'kwp forward', '' using 4 title 'kwp local'
