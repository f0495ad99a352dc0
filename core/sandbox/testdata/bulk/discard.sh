__sgb_shed=2
__sgb_blocked_members
for __sgb_x in "${__sgb_dirs[@]}"; do
	[[ $__sgb_x == /* ]] && __sg_blocked "$__sgb_x" -
done
__sg_fault 87 - "bulk delivery incomplete"
