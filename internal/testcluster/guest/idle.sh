#!/bin/sh
# CGI /cgi-bin/idle: stops the loop /cgi-bin/busy started, if it runs.
pidfile=/run/busy.pid
[ -s $pidfile ] && kill "$(cat $pidfile)" 2>/dev/null
rm -f $pidfile
printf 'Content-Type: text/plain\r\n\r\nidle\n'
