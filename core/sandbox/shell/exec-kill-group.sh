#!/bin/bash
# exec-kill-group.sh: SIGKILLs the process group $1 from outside, when the
# wrapper still runs at deadline + EnforceGrace:
# `/bin/bash -c SCRIPT sandgate-kill PID`. Only the group, never the bare pid:
# Linux does not hand out a pid again while it still names a live group, so the
# kill cannot hit an unrelated process after W is gone. Exit 0 when the signal
# was sent, 1 when the group no longer exists (or may not be signalled). It is
# shipped without a final newline, as it always was.
kill -KILL -- "-$1"
