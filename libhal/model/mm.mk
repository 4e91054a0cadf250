# SPDX-License-Identifier: MIT
#
# mm.mk - the multimodal API (mmhal_mmproj, chunks, evaluation into a
# session) and the mmrun tool. Included by ./Makefile after audio.mk.
# MM_LIB_OBJS: its objects in libmmmodel.a.

MM_LIB_OBJS :=
