cd -- "$1" || exit 126; unset OLDPWD; exec /bin/bash -c "$2"
