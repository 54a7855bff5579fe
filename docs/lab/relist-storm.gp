# kwp lab run relist-storm: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/relist-storm.png'
set title 'relist storm: upstream LISTs after an apiserver restart'
set xlabel 'informers'
set ylabel 'upstream LISTs of configmaps'
set key left top
set grid
set style data linespoints
plot 'docs/lab/relist-storm.dat' using 1:2 title 'direct' lw 2, 'docs/lab/relist-storm.dat' using 1:3 title 'through kwp' lw 2
