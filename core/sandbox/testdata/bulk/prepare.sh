__sgb_shed=1
__sgb_unpack
__sgb_step prepare
__sgb_shed=0
