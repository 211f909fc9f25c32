/* audit.c - audit messages; see include/agentchat/audit.h. */
#define _GNU_SOURCE   /* memmem */
#include "agentchat/audit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/json.h"

static const struct ac_json_style audit_style = { 2, 0, 1, ",", ": " };

int ac_audit_request(const char *actor, const char *event, const char *id, const json_t *body,
                     struct ac_post_req *req, char **title, char **text, struct ac_err *err)
{
    size_t len;

    *title = NULL;
    *text = ac_json_dump(body, &audit_style, &len);
    if (!*text)
        return ac_err_sys(err, ENOMEM, NULL, "could not encode the audit message");
    if (id) {
        size_t n = strlen(event) + strlen(id) + 2;
        *title = malloc(n);
        if (*title)
            snprintf(*title, n, "%s %s", event, id);
    } else {
        *title = strdup(event);
    }
    if (!*title) {
        free(*text);
        *text = NULL;
        return ac_err_sys(err, ENOMEM, NULL, "could not encode the audit message");
    }
    memset(req, 0, sizeof *req);
    req->from = actor;
    req->to = "all";
    req->title = *title;
    req->status = event;
    req->body = *text;
    req->body_len = len;
    return 0;
}

int ac_audit_post(struct ac_chan *ch, const char *actor, const char *event,
                  const char *id, const json_t *body, uint64_t *seq, struct ac_err *err)
{
    struct ac_post_req req;
    struct ac_post_result res = { 0, { 0 }, 0 };
    char *text, *title;
    int rc;

    if (ac_audit_request(actor, event, id, body, &req, &title, &text, err) == -1)
        return -1;
    rc = ac_chan_msg_post(ch, &req, &res, err);
    free(title);
    free(text);
    /* A message that became visible counts as posted, even when a later
     * step (the directory fsync) failed: it is published (docs/format.md 3.6
     * decides publication by the message's presence). */
    if (rc == -1 && res.published)
        rc = 0;
    if (rc == 0 && seq)
        *seq = res.seq;
    return rc;
}

int ac_audit_find_transaction(struct ac_chan *ch, const char *txid, struct ac_err *err)
{
    struct ac_listing l;
    char needle[96];
    size_t i;
    int found = 0;

    snprintf(needle, sizeof needle, "\"transaction_id\": \"%s\"", txid);
    if (ac_chan_msg_list(ch, -1, 0, &l, err) == -1)
        return -1;
    for (i = 0; i < l.n && !found; i++) {
        struct ac_file f;
        struct ac_err rerr = AC_ERR_INIT;
        if (ac_chan_msg_read(ch, l.v[i].name, &f, &rerr) == -1)
            continue;
        found = f.len >= strlen(needle) && memmem(f.data, f.len, needle, strlen(needle)) != NULL;
        ac_file_free(&f);
    }
    ac_listing_free(&l);
    return found;
}
