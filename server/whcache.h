/* whcache.h - a short-lived cache of warehouse lookups (name → id, storage),
 * and the warehouses' storage handles.
 *
 * Every catalog request resolves its warehouse; warehouses change rarely, so
 * a lookup is kept a few seconds.  A warehouse deleted through this process
 * is forgotten at once; one deleted through another replica can be served
 * for up to the TTL, which is harmless: only empty warehouses can be deleted
 * and the database's foreign keys refuse anything created in one. */
#ifndef SRV_WHCACHE_H
#define SRV_WHCACHE_H

#include "catalog.h"

struct srv_whcache;

struct srv_whcache *srv_whcache_new(void);
void srv_whcache_free(struct srv_whcache *c);

/* Fills *wh from the cache (1) or not (0). Thread-safe. */
int srv_whcache_get(struct srv_whcache *c, const char *name, struct cat_warehouse *wh);
void srv_whcache_put(struct srv_whcache *c, const struct cat_warehouse *wh);
void srv_whcache_clear(struct srv_whcache *c);

/* Sets wh->io to the storage handle of the warehouse: opened from
 * wh->profile on first use and shared while the warehouse's profile is
 * unchanged (a changed profile gets a new handle; requests still holding the
 * old one finish with it).  The caller owns one reference (st_io_release).
 * Thread-safe; opening does no network IO. */
int srv_whcache_io(struct srv_whcache *c, struct cat_warehouse *wh,
                   struct fl_err *err) FL_MUST_CHECK;

#endif
