# kwp lab run timeouts: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/timeouts.png'
set title 'timeoutSeconds: requests and 410s per (compressed) hour'
set style data histograms
set style histogram clustered
set style fill solid 0.8
set ylabel 'per hour'
set grid y
set key top left
plot 'docs/lab/timeouts.dat' using 3:xtic(2) title 'requests', '' using 4 title '410s'
