Binput_scaleJ
ף<