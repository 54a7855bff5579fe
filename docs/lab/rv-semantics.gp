# kwp lab run rv-semantics: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/rv-semantics.png'
set multiplot layout 1,2 title 'LIST under churn: rv "" vs 0 vs N'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics
set key below
set yrange [0:*]
set xlabel 'resourceVersion'
set ylabel 'p50 latency (ms)'
plot 'docs/lab/rv-semantics.dat' using 2:xtic(1) title 'server', '' using 3 title 'through kwp'
set ylabel 'upstream requests'
plot 'docs/lab/rv-semantics.dat' using 4:xtic(1) title 'server', '' using 5 title 'through kwp'
unset multiplot
