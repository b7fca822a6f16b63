/*
 * load_check.c — the installed libuniflow.so loads and runs on its own: Tests/abi/run
 * runs this with the Swift toolchain's folder hidden behind an empty tmpfs.
 */
#include <stdio.h>
#include <string.h>

#include <uniflow.h>

int main(void) {
    uf_dispatcher *d = NULL;
    char *state = NULL;
    int status;

    if (strcmp(uf_version(), UNIFLOW_VERSION) != 0 || uf_version_number() != UNIFLOW_VERSION_NUMBER) {
        fprintf(stderr, "load_check: library %s, header %s\n", uf_version(), UNIFLOW_VERSION);
        return 1;
    }
    status = uf_dispatcher_new(&d, NULL);
    if (status != UF_OK) {
        fprintf(stderr, "load_check: uf_dispatcher_new: %s: %s\n", uf_status_name(status), uf_last_error());
        return 1;
    }
    /* Exercise the runtime a little: parsing, Swift strings and collections. */
    status = uf_register(d, "{\"feature\":\"Door\",\"states\":{\"Open\":{},\"Closed\":{}}}");
    if (status == UF_OK) status = uf_submit(d, "{\"kind\":\"initialize\",\"feature\":\"Door\",\"into\":\"Open\"}");
    if (status == UF_OK) status = uf_state_get(d, &state);
    if (status != UF_OK) {
        fprintf(stderr, "load_check: %s: %s\n", uf_status_name(status), uf_last_error());
        uf_dispatcher_free(d);
        return 1;
    }
    printf("libuniflow %s loaded: %s\n", uf_version(), state);
    uf_free(state);
    uf_dispatcher_free(d);
    return 0;
}
