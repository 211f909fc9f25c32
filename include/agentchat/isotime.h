/*
 * isotime.h - ISO-8601 timestamps as Python 3.11's datetime.fromisoformat()
 * reads them, and as isoformat() writes them.
 *
 * Records carry wall-clock times with a UTC offset ("updated_at must include
 * an explicit UTC offset"); lease expiry compares them with the current
 * wall clock, so agents are assumed to have clocks synchronised to within a
 * small fraction of a lease (NTP): an expiry is never judged on a monotonic
 * clock because it must mean the same thing in every process.
 *
 * Accepted (Python 3.11): dates YYYY-MM-DD, YYYYMMDD, YYYY-Www[-D],
 * YYYYWww[D]; then optionally any one separator character and a time
 * HH[:MM[:SS[.f+]]] or HH[MM[SS[.f+]]] (',' also starts a fraction; more than
 * 6 fraction digits are truncated); then optionally Z or +HH[:MM[:SS[.ffffff]]]
 * (also without colons).
 */
#ifndef AGENTCHAT_ISOTIME_H
#define AGENTCHAT_ISOTIME_H

#include <stddef.h>
#include <stdint.h>

#define AC_ISOTIME_HAS_OFFSET 1

/* Parse s[0..len). Returns -1 when Python would raise ValueError, else 0 with
 * *epoch_us = the instant in microseconds since 1970 (UTC; a naive time is
 * taken as UTC) and *flags AC_ISOTIME_HAS_OFFSET when an offset was given. */
int ac_isotime_parse(const char *s, size_t len, int64_t *epoch_us, int *flags);

/* Current wall clock in microseconds since 1970. */
int64_t ac_isotime_now_us(void);

/* isoformat() of an instant in the local zone: digits 0 (seconds) or 6
 * (microseconds, always printed, as timespec="microseconds"). */
void ac_isotime_format(int64_t epoch_us, int digits, char out[48]);

/* now + timedelta(seconds=seconds) as a lease or lock expiry (rounded to
 * microseconds half to even, as timedelta does): 0 and *out, -1 when the
 * duration is not a positive finite number, -2 when the expiry would pass
 * the year 9999 (Python raises OverflowError there). */
int ac_isotime_expiry(int64_t now_us, double seconds, int64_t *out);

#endif
