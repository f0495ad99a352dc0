__sgb_shed=1
__sgb_unpack
__sgb_prepare
__sgb_shed=0
