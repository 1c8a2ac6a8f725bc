/* cmd_feed.h - `floe feed`: manage the feeds of a running floe through its
 * management API (/management/v1/feeds). */
#ifndef SRV_CMD_FEED_H
#define SRV_CMD_FEED_H

#include <stdio.h>

/* Runs the subcommand with argv after "feed": create DEFINITION, list, show
 * NAME, pause NAME, resume NAME, delete NAME, replay NAME [--from KEY]
 * [--to KEY] [--since TIME] [--until TIME] [--force].  Prints the API's JSON
 * answer on stdout (an error's message on stderr).  Returns 0 on success, 2
 * for a usage error, 1 when the catalog refused or could not be reached. */
int srv_cmd_feed(int argc, char **argv);

/* Prints the subcommands and options for `floe feed --help`. */
void srv_cmd_feed_help(FILE *f);

#endif
