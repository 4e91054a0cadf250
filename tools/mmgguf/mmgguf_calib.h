/* SPDX-License-Identifier: MIT */
/* mmgguf_calib.h - mmgguf's calib and capgen commands (mmgguf_calib.c). */
#ifndef MMGGUF_CALIB_H
#define MMGGUF_CALIB_H

/* argv after the command name; exit status 0, 1 failed, 2 usage */
int mmgguf_calib(int argc, char **argv);
int mmgguf_capgen(int argc, char **argv);

#endif /* MMGGUF_CALIB_H */
