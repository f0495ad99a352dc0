__sgb_shed=1
__sgb_unpack
__sgb_load 1 || __sg_fault 87 - "bulk manifest missing or malformed"
__sgb_prepare
__sgb_extract_rest
__sgb_present
__sgb_land_all
__sgb_shed=2
