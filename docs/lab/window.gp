# kwp lab run window: data in the .dat next to this file
set terminal pngcairo size 1000,640 noenhanced
set output 'docs/lab/window.png'
set title 'P(re-watch gets 410): disconnect t x write rate R, window of 1000 events (computed boundary 1000 / R)'
set xlabel 'disconnect t (s)'
set ylabel 'writes/s R'
set ytics ("50" 0, "100" 1, "200" 2, "500" 3)
set cblabel 'P(410)'
set cbrange [0:1]
set palette defined (0 'white', 1 'red')
plot 'docs/lab/window.dat' using 1:2:3 with image notitle, \
     'docs/lab/window.dat' using ($4 > 0 ? 1000.0 / $4 : 1/0):2 with points pt 7 lc 'black' title 'window / R'
