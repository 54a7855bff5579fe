# kwp lab run bookmarks: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/bookmarks.png'
set title 'bookmarks: 410 rate of the re-watch after a quiet period'
set style fill solid 0.8
set boxwidth 0.6
set yrange [0:1.1]
set ylabel 'fraction of re-watches that got 410'
set grid y
plot 'docs/lab/bookmarks.dat' using 1:3:xtic(2) with boxes notitle
