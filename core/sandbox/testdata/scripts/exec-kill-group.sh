kill -KILL -- "-$1"
