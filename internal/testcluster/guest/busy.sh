#!/bin/sh
# CGI /cgi-bin/busy: keeps the guest's CPU busy, for the tests of autoscaling
# on it. One loop at most, however often it is called: it answers the loop's
# PID, the same on every call while the loop runs. The loop ends by itself
# after 10 minutes, so a test that dies before it calls /cgi-bin/idle leaves
# no guest spinning for long. timeout runs the loop in its own process, whose
# PID idle.sh stops; the loop's output is not the CGI's, so httpd answers at
# once.
pidfile=/run/busy.pid
if ! { [ -s $pidfile ] && kill -0 "$(cat $pidfile)" 2>/dev/null; }; then
	timeout 600 sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
	echo $! >$pidfile
fi
printf 'Content-Type: text/plain\r\n\r\nbusy %s\n' "$(cat $pidfile)"
