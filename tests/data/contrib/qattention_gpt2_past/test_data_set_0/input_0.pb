BinputJ@y]§árô»[Dburm
f[v]mÄÔä†²ûqfkïş–4ãgh"]f"ƒõ„àÇ[şãG–|ØÜ|*CÙ