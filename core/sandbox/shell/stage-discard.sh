#!/bin/bash
# stage-discard.sh: removes a staged write's TMP ($1) after a transfer that
# failed. It is shipped without a final newline, as it always was.
rm -f -- "$1"
