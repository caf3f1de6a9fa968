/* catalog_fuzz.c - libFuzzer target for the catalog file reader
 * (tlr_catalog_from_json): the instance-type catalog a service or
 * tailorctl loads with --catalog, which may come from anywhere an
 * operator downloaded it.  The first byte picks the options (spot
 * discount, zones with and without zone IDs, on-demand only).
 *
 * Properties beyond "no crash, no leak, no UB": an accepted catalog packs
 * as a protobuf message that decodes again to the same bytes, every
 * instance type has a name; a refusal says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlr_catalog.h"
#include "tlr_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const zones[] = { "us-west-2a", "us-west-2b" };
    static const char *const ids[] = { "usw2-az1", "" };
    if (size < 1 || size > 1 << 20)
        return 0;
    uint8_t pick = data[0];
    tlr_catalog_file_opts o = {
        .region = (pick & 1) ? "us-west-2" : NULL,
        .zones = (pick & 2) ? zones : NULL,
        .n_zones = (pick & 2) ? 2 : 0,
        .zone_ids = (pick & 6) == 6 ? ids : NULL,
        .spot_discount = (pick & 8) ? 0.7 : 0,
        .no_spot = (pick & 16) != 0,
    };
    Tailor__V1__Catalog *c = NULL;
    char err[256] = "";

    if (tlr_catalog_from_json((const char *)data + 1, size - 1, &o, &c, err, sizeof(err)) !=
        TLR_OK) {
        if (err[0] == '\0')
            abort();
        return 0;
    }
    for (size_t i = 0; i < c->n_instance_types; i++)
        if (c->instance_types[i]->name == NULL || c->instance_types[i]->name[0] == '\0')
            abort();
    size_t n = tailor__v1__catalog__get_packed_size(c);
    uint8_t *buf = malloc(n ? n : 1), *buf2 = malloc(n ? n : 1);
    if (buf == NULL || buf2 == NULL || tailor__v1__catalog__pack(c, buf) != n)
        abort();
    Tailor__V1__Catalog *d = tailor__v1__catalog__unpack(NULL, n, buf);
    if (d == NULL || tailor__v1__catalog__get_packed_size(d) != n ||
        tailor__v1__catalog__pack(d, buf2) != n || memcmp(buf, buf2, n) != 0)
        abort();
    tailor__v1__catalog__free_unpacked(d, NULL);
    free(buf);
    free(buf2);
    tlr_catalog_free(c);
    return 0;
}
