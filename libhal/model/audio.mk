# SPDX-License-Identifier: MIT
#
# audio.mk - the audio front end (log-mel with FFTW3) and the Whisper-style
# audio encoder with its ultravox projector. Included by ./Makefile after
# llama.mk. AUDIO_LIB_OBJS: its objects in libmmmodel.a.

AUDIO_LIB_OBJS :=
