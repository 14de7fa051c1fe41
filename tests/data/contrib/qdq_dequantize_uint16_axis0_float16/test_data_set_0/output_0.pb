
ByJy_OYø¹jMFW7Dr\†\YSU7T-