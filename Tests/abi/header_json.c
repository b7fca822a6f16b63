/*
 * header_json.c — uniflow_json.h compiles on its own as strict C99 (it includes
 * jansson.h and uniflow.h itself).
 */
#include <uniflow_json.h>

static int subscriber(json_t *mutation, void *payload) {
    (void)payload;
    return json_is_object(mutation) ? UF_KEEP : UF_STOP;
}

int header_json_uses(uf_dispatcher *d);
int header_json_uses(uf_dispatcher *d) {
    json_t *payload = json_object();
    int status = uf_json_subscribe(d, NULL, subscriber, NULL, NULL, NULL);
    if (status == UF_OK) status = uf_json_initialize(d, "F", "S", payload);
    json_decref(payload);
    return status;
}
