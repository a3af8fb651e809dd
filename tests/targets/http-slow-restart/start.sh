#!/bin/sh
# http-correct behind a start that takes 2 s, as a server on a heavy framework does: after a kill, its
# replacement answers only 2 s later.
sleep 2
exec ../../../targets/http-correct/http-correct
