# kwp lab run compaction: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/compaction.png'
set title 'compaction: HTTP status of LISTs at R0 before and after'
set style data histograms
set style histogram clustered
set style fill solid 0.8
set yrange [0:450]
set ylabel 'HTTP status'
set xtics ('Exact LIST at R0' 0, 'continue page 2' 1)
set key top left
plot 'docs/lab/compaction.dat' using 2 title 'direct before', '' using 3 title 'direct after', '' using 4 title 'kwp before', '' using 5 title 'kwp after'
