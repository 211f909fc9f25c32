#!/usr/bin/env python3
"""A stand-in for Claude Code's agent teams, for tests/functional/claude_bridge_spec.lua.

Written from the documented behaviour (docs/claude-teams.md, "The lock
protocol"), not from Claude Code's code: the teammates named by --as poll
their inbox files (reading without the lock), and when there is something
unread take the inbox's lock the way proper-lockfile does (a
directory <inbox>.json.lock made with mkdir; 10 tries with a 5 to 100 ms
backoff; a lock whose mtime is older than the stale time is removed and
taken), mark what they read as read and write the file back *in place*
(truncate and write, as Node's writeFile does), answer shutdown requests
(approved, or rejected for the names of --reject) in the requester's inbox,
and, with --send, append messages of their own to other inboxes on their own
schedule.

    claude_standin.py --team DIR --as researcher,tester [--poll 0.02]
        [--reject tester] [--send N --send-to alice,bob --send-every 0.01]
        [--stop FILE] [--log FILE]

It runs until the file --stop exists and everything it had to send is sent,
then writes one JSON line of counts to --log (or stdout): sent, read,
answered, lock_retries, lock_gave_up (tries that failed all 10 times; the
write is tried again on the next tick, as a teammate would retry), stale
(stale locks taken over).

    claude_standin.py --team DIR --hold NAME --seconds S [--ready FILE]

holds NAME's inbox lock for S seconds (refreshing its mtime every second, as
proper-lockfile's update does) and exits: the poller holding the lock.
"""
import argparse
import datetime
import json
import os
import sys
import time

STALE = 10.0
COUNTS = {"sent": 0, "read": 0, "answered": 0, "lock_retries": 0, "lock_gave_up": 0, "stale": 0}


def now_iso():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def lock(path):
    """proper-lockfile's lock(): True when taken."""
    lockdir = path + ".lock"
    for attempt in range(11):
        try:
            os.mkdir(lockdir)
            return True
        except FileExistsError:
            pass
        try:
            st = os.stat(lockdir)
        except FileNotFoundError:
            continue
        if st.st_mtime < time.time() - STALE:
            COUNTS["stale"] += 1
            try:
                os.rmdir(lockdir)
            except OSError:
                pass
            continue
        if attempt < 10:
            COUNTS["lock_retries"] += 1
            time.sleep(min(0.1, 0.005 * (2 ** attempt)))
    COUNTS["lock_gave_up"] += 1
    return False


def unlock(path):
    try:
        os.rmdir(path + ".lock")
    except FileNotFoundError:
        pass


def read(path):
    """Claude Code's readMailbox: a file that does not parse reads as []."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, list) else []
    except (OSError, ValueError):
        return []


def write_in_place(path, entries):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(entries, indent=2, ensure_ascii=False))


def append(inboxes, name, entry):
    """Claude Code's writeToMailbox: lock, read, push, write in place."""
    path = os.path.join(inboxes, name + ".json")
    if not lock(path):
        return False
    try:
        entries = read(path)
        entries.append(entry)
        write_in_place(path, entries)
    finally:
        unlock(path)
    return True


def poll(inboxes, member, reject, outbox):
    """InboxPoller: read (without the lock); when there are unread entries,
    take the lock, read again, mark them read and write; then act."""
    path = os.path.join(inboxes, member + ".json")
    if not any(isinstance(e, dict) and not e.get("read") for e in read(path)):
        return
    if not lock(path):
        return
    try:
        entries = read(path)
        fresh = [e for e in entries if isinstance(e, dict) and not e.get("read")]
        if not fresh:
            return
        for e in fresh:
            e["read"] = True
        write_in_place(path, entries)
    finally:
        unlock(path)
    COUNTS["read"] += len(fresh)
    for e in fresh:
        try:
            msg = json.loads(e.get("text", ""))
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("type") == "shutdown_request":
            ok = member not in reject
            answer = {"type": "shutdown_approved" if ok else "shutdown_rejected",
                      "requestId": msg.get("requestId"), "from": member, "timestamp": now_iso()}
            if not ok:
                answer["reason"] = "still running the test suite"
            else:
                answer["paneId"] = "in-process"
                answer["backendType"] = "in-process"
            outbox.append((e.get("from"), {"from": member, "text": json.dumps(answer), "timestamp": now_iso(),
                                           "color": "blue", "read": False}))
            COUNTS["answered"] += 1


def hold(args):
    inboxes = os.path.join(args.team, "inboxes")
    path = os.path.join(inboxes, args.hold + ".json")
    while not lock(path):
        pass
    if args.ready:
        open(args.ready, "w").close()
    end = time.time() + args.seconds
    while time.time() < end:
        time.sleep(min(1.0, max(0.0, end - time.time())))
        now = time.time()
        os.utime(path + ".lock", (now, now))
    unlock(path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--team", required=True)
    p.add_argument("--as", dest="members", default="")
    p.add_argument("--poll", type=float, default=0.02)
    p.add_argument("--reject", default="")
    p.add_argument("--send", type=int, default=0)
    p.add_argument("--send-to", default="")
    p.add_argument("--send-every", type=float, default=0.01)
    p.add_argument("--stop")
    p.add_argument("--log")
    p.add_argument("--hold")
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--ready")
    args = p.parse_args()
    if args.hold:
        hold(args)
        return
    inboxes = os.path.join(args.team, "inboxes")
    members = [m for m in args.members.split(",") if m]
    reject = set(m for m in args.reject.split(",") if m)
    targets = [t for t in args.send_to.split(",") if t]
    outbox = []
    next_send = time.time()
    while True:
        for m in members:
            poll(inboxes, m, reject, outbox)
        while outbox and append(inboxes, outbox[0][0], outbox[0][1]):
            outbox.pop(0)
        while COUNTS["sent"] < args.send and time.time() >= next_send:
            n = COUNTS["sent"]
            sender, target = members[n % len(members)], targets[n % len(targets)]
            entry = {"from": sender, "text": "standin-%d from %s to %s" % (n, sender, target),
                     "summary": "standin %d" % n, "timestamp": now_iso(), "color": "green", "read": False}
            if not append(inboxes, target, entry):
                break
            COUNTS["sent"] += 1
            next_send += args.send_every
        done = COUNTS["sent"] >= args.send and not outbox
        if done and args.stop and os.path.exists(args.stop):
            break
        time.sleep(args.poll)
    line = json.dumps(COUNTS, sort_keys=True)
    if args.log:
        with open(args.log, "w") as f:
            f.write(line + "\n")
    else:
        print(line)


if __name__ == "__main__":
    main()
