/*
 * audit.h - audit messages (docs/format.md 3.9): every structured mutation posts
 * one, through the same sequence allocation as `post`.
 *
 * The message comes from the actor, goes to all, has `status: <event>` and
 * `title: <event> <id>` (or the bare event when there is no id), and its
 * body is the JSON object with indent 2, sorted keys and non-ASCII as UTF-8
 * (Python's json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False)).
 */
#ifndef AGENTCHAT_AUDIT_H
#define AGENTCHAT_AUDIT_H

#include <jansson.h>
#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/store.h"

/* Post it. Returns 0 (and the seq in *seq when not NULL) or -1 with err. */
int ac_audit_post(struct ac_chan *ch, const char *actor, const char *event,
                  const char *id, const json_t *body, uint64_t *seq, struct ac_err *err);

/* The post request of an audit message, without posting it (a backend
 * that publishes it in one transaction with its records): *title and *text
 * are malloc'ed and back req's strings; free both. 0, or -1 with err. */
int ac_audit_request(const char *actor, const char *event, const char *id, const json_t *body,
                     struct ac_post_req *req, char **title, char **text, struct ac_err *err);

/* Does any message file of the channel contain `"transaction_id": "<id>"`?
 * (The recovery check of docs/format.md 3.6: a substring scan of every message.)
 * Returns 1, 0, or -1 with err. */
int ac_audit_find_transaction(struct ac_chan *ch, const char *txid, struct ac_err *err);

#endif
