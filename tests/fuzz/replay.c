/* replay.c - runs LLVMFuzzerTestOneInput once on every file named on the
 * command line (directories are walked one level, in name order).
 *
 * Used instead of libFuzzer's main when the build is not a fuzzing build; it
 * fails when it finds no input at all, so a misplaced corpus cannot pass. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *data = NULL;
	long size = -1;
	int rc = -1;

	if (f == NULL)
		goto out;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	/* An exact-size heap copy, so ASan sees any read past the input. */
	data = malloc(size > 0 ? (size_t)size : 1);
	if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size)
		goto out;
	fprintf(stderr, "replay %s (%ld bytes)\n", path, size);
	(void)LLVMFuzzerTestOneInput(data, (size_t)size);
	rc = 0;
out:
	if (rc != 0)
		perror(path);
	free(data);
	if (f != NULL)
		fclose(f);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0, failed = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **list;
		int n;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i]) != 0;
			count++;
			continue;
		}
		n = scandir(argv[i], &list, NULL, alphasort);
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];

			if (list[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], list[k]->d_name);
				failed |= run_file(path) != 0;
				count++;
			}
			free(list[k]);
		}
		free(list);
	}
	if (count == 0) {
		fprintf(stderr, "replay: no inputs\n");
		return 1;
	}
	printf("replayed %d inputs, %d unreadable\n", count, failed);
	return failed ? 1 : 0;
}
