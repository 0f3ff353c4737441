#!/bin/bash
# usage: run.sh OUTDIR SERVERBIN
OUT=$1; O=$2; N=${NATS_CLI:-nats}  # the nats CLI (../shared/tools/nats beside the repository)
rm -rf $OUT; mkdir -p $OUT; : > $OUT/pids; : > $OUT/subpids
python3 proxy.py 15103 15101 $OUT/route > /dev/null 2>&1 & echo $! >> $OUT/pids
python3 proxy.py 15203 15201 $OUT/leaf > /dev/null 2>&1 & echo $! >> $OUT/pids
$O -c ${CONFPFX}a.conf -l $OUT/a.log & echo $! >> $OUT/pids
sleep 0.5
$O -c ${CONFPFX}b.conf -l $OUT/b.log & echo $! >> $OUT/pids
sleep 2
$O -c ${CONFPFX}l.conf -l $OUT/l.log & echo $! >> $OUT/pids
sleep 2
S="-s nats://u1:p1@127.0.0.1:15002"
$N $S sub 'foo.>' > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N $S sub --queue q1 bar > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N $S sub --queue q2 bar > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N -s nats://u2:p2@127.0.0.1:15002 sub 'pin.*' > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N -s nats://u2:p2@127.0.0.1:15002 sub --queue pq 'pinq' > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N -s nats://u1:p1@127.0.0.1:15003 sub 'leaf.sub' > /dev/null 2>&1 & echo $! >> $OUT/subpids
$N -s nats://u1:p1@127.0.0.1:15003 sub --queue lq 'leaf.q' > /dev/null 2>&1 & echo $! >> $OUT/subpids
sleep 2
A="-s nats://u1:p1@127.0.0.1:15001"
$N $A pub foo.x hello
$N $A pub foo.y --reply rep.1 withreply
$N $A pub -H K:V foo.h hdrmsg
$N $A pub -H K:V --reply rep.2 foo.h hdrreply
$N $A pub bar queued
$N $A pub --reply rep.3 bar queuedreply
$N $A pub -H K:V bar queuedhdr
$N -s nats://u2:p2@127.0.0.1:15001 pub pin.a pinned
$N -s nats://u2:p2@127.0.0.1:15001 pub --reply r.p pinq pinnedq
$N -s nats://u2:p2@127.0.0.1:15001 pub -H A:B pin.b pinnedhdr
$N -s nats://u1:p1@127.0.0.1:15003 pub foo.fromleaf fromleaf
$N -s nats://u1:p1@127.0.0.1:15003 pub --reply lr foo.fromleaf fromleafreply
$N -s nats://u1:p1@127.0.0.1:15003 pub bar fromleafq
$N -s nats://u1:p1@127.0.0.1:15003 pub -H X:Y bar fromleafqhdr
$N $S pub leaf.sub toleaf
$N $S pub leaf.q toleafq
$N $S pub -H K:V --reply rr leaf.q toleafqhdr
sleep 1
for p in $(cat $OUT/subpids); do kill $p; done
sleep 2
for p in $(tac $OUT/pids); do kill $p; done
sleep 1
ls -la $OUT/route $OUT/leaf
