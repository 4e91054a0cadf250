// SPDX-License-Identifier: GPL-2.0
/*
 *	mmhal-view [DEV] [CHAN_ID...]
 *
 * What the ioctls say, as one JSON object, for tests that compare it with
 * mmctl's netlink view: {"bus_bw": N, "chans": [{"id", "weight", "class",
 * "cap", "bytes", "frames", "dropped", "errors"}, ...]}. DEV defaults to
 * /dev/mmedge0 (an argument with a '/' is a device). Exit 1 if a channel
 * cannot be read.
 */
#include <stdlib.h>
#include <string.h>

#include <mmhal.h>

#include "json.h"

int main(int argc, char **argv)
{
	const char *path = MMHAL_DEFAULT_DEV;
	struct mmhal_chan_stats st;
	struct json_writer jw;
	struct mmhal_dev *dev;
	uint64_t bus = 0;
	int i = 1, ret, status = 0;

	if (argc > 1 && strchr(argv[1], '/'))
		path = argv[i++];
	ret = mmhal_dev_open(path, &dev);
	if (ret < 0) {
		fprintf(stderr, "mmhal-view: %s: %s\n", path,
			mmhal_strerror(ret));
		return 1;
	}
	json_init(&jw, stdout, false);
	json_begin_object(&jw);
	if (mmhal_dev_bus_get(dev, &bus) == 0)
		json_kv_u64(&jw, "bus_bw", bus);
	json_key(&jw, "chans");
	json_begin_array(&jw);
	for (; i < argc; i++) {
		ret = mmhal_dev_chan_stats(dev, (uint32_t)atoi(argv[i]), &st);
		if (ret < 0) {
			fprintf(stderr, "mmhal-view: channel %s: %s\n",
				argv[i], mmhal_strerror(ret));
			status = 1;
			continue;
		}
		json_begin_object(&jw);
		json_kv_u64(&jw, "id", st.id);
		json_kv_u64(&jw, "weight", st.weight);
		json_kv_u64(&jw, "class", st.class);
		json_kv_u64(&jw, "cap", st.cap);
		json_kv_u64(&jw, "bytes", st.bytes);
		json_kv_u64(&jw, "frames", st.frames);
		json_kv_u64(&jw, "dropped", st.dropped);
		json_kv_u64(&jw, "errors", st.errors);
		json_end_object(&jw);
	}
	json_end_array(&jw);
	json_end_object(&jw);
	if (json_finish(&jw) < 0)
		status = 1;
	mmhal_dev_close(dev);
	return status;
}
