//go:build amd64 && gc && !purego

#include "textflag.h"

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT|NOFRAME, $0-0
	PAUSE
	RET
