
BscaleJq=…:;P<;ë8!<Ã=