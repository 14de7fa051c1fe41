
BbiasJä9°8e1¼7Xµ[6i&~­