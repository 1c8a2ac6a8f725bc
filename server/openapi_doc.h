/* openapi_doc.h - openapi/floe.yaml, embedded at build time. */
#ifndef SRV_OPENAPI_DOC_H
#define SRV_OPENAPI_DOC_H

#include <stddef.h>

extern const char srv_openapi_yaml[];
extern const size_t srv_openapi_yaml_len;

#endif
