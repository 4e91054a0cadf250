/* SPDX-License-Identifier: MIT */
/*
 * mmgguf_sign.h - mmgguf's signature commands (keygen, sign, verify).
 */
#ifndef MMGGUF_SIGN_H
#define MMGGUF_SIGN_H

#include <stdio.h>

void mmgguf_sign_usage(FILE *f);
/* argv[0] is the command: "keygen", "sign" or "verify". */
int mmgguf_sign_main(int argc, char **argv);

#endif /* MMGGUF_SIGN_H */
