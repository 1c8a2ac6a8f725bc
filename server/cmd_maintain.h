/* cmd_maintain.h - `floe maintain`: one-off maintenance of one table. */
#ifndef SRV_CMD_MAINTAIN_H
#define SRV_CMD_MAINTAIN_H

#include <stdio.h>

/* Runs the subcommand with argv after "maintain"; prints one JSON line per
 * action on stdout and returns the exit status: 0 every action succeeded,
 * 2 usage, 3 bad input (e.g. a malformed table property), 1 any other
 * failure (an unimplemented action included). */
int srv_cmd_maintain(int argc, char **argv);

/* Prints what `floe maintain --help` shows after the usage line: what the
 * command does, its options, its exit statuses. */
void srv_cmd_maintain_help(FILE *f);

#endif
