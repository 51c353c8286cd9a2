/* The environment fingerprint's JSON object, shared by the files of the
 * records layer that keep one (record.c writes and reads it for records;
 * the history's runs and machines use the same). Private to the layer. */
#ifndef SLUICE_RECORDS_ENVIRONMENT_JSON_H
#define SLUICE_RECORDS_ENVIRONMENT_JSON_H

#include <stdbool.h>

#include "core/json.h"
#include "sluice/records/record.h"

/* The object; a failed allocation clears *ok. */
cJSON *sl__environment_to_json(const sl_environment *env, bool *ok);
/* Reads holder's "environment" object, naming path and the field on failure. */
sl_status sl__environment_from_json(const cJSON *holder, sl_environment *env, const char *path, sl_err *err);

#endif
