
BYJ`m°.®ûž-°s¬» @AÃ@¡×¨÷Ah 8BöC	>A{B­¬Aü@ÄB?¯§t°Q=b:£;)BQ0
®s§ßBX¯¯*¨y¤t°@+—ÌC:BvCö><Ai®q°|®ùB