__sgb_shed=1
__sgb_land
