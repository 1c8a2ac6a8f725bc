/* cmd_ingest.h - `floe ingest`: commit CSV / NDJSON files to a table, once. */
#ifndef SRV_CMD_INGEST_H
#define SRV_CMD_INGEST_H

#include <stdio.h>

/* Runs the subcommand with argv after "ingest"; returns the exit status:
 * 0 committed (or already committed, or nothing to commit), 2 usage,
 * 3 bad input, 4 commit conflicts exhausted, 5 commit state unknown,
 * 1 any other failure.  Prints one JSON line on stdout. */
int srv_cmd_ingest(int argc, char **argv);

/* Prints what `floe ingest --help` shows after the usage line: what the
 * command does, its options, its exit statuses. */
void srv_cmd_ingest_help(FILE *f);

#endif
