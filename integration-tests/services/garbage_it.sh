#!/usr/bin/env bash
# garbage_it.sh BUILD_DIR GARBAGE_SENDER - every log line of every service
# is JSON, and every service keeps serving, under garbage input.
#
# The four services run on kubesim + moto as the disruptor tests start
# them (disruptor/lib.sh ds_up).  Then:
#   - garbage_sender sends each service's REP port a few hundred broken
#     requests (random bytes, cut and mutated envelopes, a 2 MiB type,
#     every request type with nonsense payloads whose strings are not
#     UTF-8) and publishes garbage to the watcher's decisions listener;
#   - the interruption queue (moto SQS) gets messages that are not events
#     (not JSON, JSON of the wrong shape, an event for no instance);
# and then each service must still answer a Ping, still be alive, and
# every line it wrote on stdout or stderr must parse as JSON
# (python3 json.loads): a log line that a hostile peer could break would
# be a log line a log pipeline drops, or one that forges another line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../disruptor/lib.sh"
build=${1:?usage: garbage_it.sh BUILD_DIR GARBAGE_SENDER}
sender=${2:?usage: garbage_it.sh BUILD_DIR GARBAGE_SENDER}
export DS_ARGS="--interruption-queue tailor-garbage-it --interruption-interval 300ms"
trap ds_down EXIT
ds_up "$build" || { echo "FAIL: stack did not start"; exit 1; }

/usr/bin/python3 - <<'PY' || { echo "FAIL: could not fill the interruption queue"; exit 1; }
import json, os, botocore.session
sqs = botocore.session.get_session().create_client(
    "sqs", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
q = sqs.create_queue(QueueName="tailor-garbage-it")["QueueUrl"]
bodies = ["not json", "{", "[]", "null", '{"detail-type":7}', "\u00ff\ufffd\u202e", "x" * 200000,
          json.dumps({"version": "0", "detail-type": "EC2 Spot Instance Interruption Warning",
                      "source": "aws.ec2", "detail": {"instance-id": "i-\u00e9\u202e\"\\n"}}),
          json.dumps({"version": "0", "detail-type": "EC2 Instance State-change Notification",
                      "source": "aws.ec2", "detail": {"instance-id": "i-" + "9" * 500,
                                                      "state": "\u0000stopping"}})]
for b in bodies:
    sqs.send_message(QueueUrl=q, MessageBody=b)
PY

start=$SECONDS
check "every service answers a Ping after a few hundred garbage requests" \
  $(tls_as tailorctl) "$sender" --count "${GARBAGE_COUNT:-300}" --seed "${GARBAGE_SEED:-$RANDOM}" \
    --pub "$(nng_url "$w_dec")" --pub-as tailor-launcher \
    --rep "solver=$(nng_url "$s_rep")" --rep "watcher=$(nng_url "$w_rep")" \
    --rep "launcher=$(nng_url "$l_rep")" --rep "disruptor=$(nng_url "$d_rep")"
echo "garbage sent in $((SECONDS - start))s"
queue_drained() {
  /usr/bin/python3 - <<'PY'
import os, sys, botocore.session
sqs = botocore.session.get_session().create_client(
    "sqs", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"])
q = sqs.get_queue_url(QueueName="tailor-garbage-it")["QueueUrl"]
a = sqs.get_queue_attributes(QueueUrl=q, AttributeNames=["All"])["Attributes"]
sys.exit(int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"]) != 0)
PY
}
check "the disruptor read and deleted every message that is not an event" wait_until 20 queue_drained
for p in "${ds_pids[@]}" "$ds_pid"; do
  check "service pid $p is still running" kill -0 "$p"
done
check "the disruptor is still ready" wait_for_status "http://127.0.0.1:$d_http/readyz" 200 5
for svc in solver watcher launcher disruptor; do
  check "every line $svc wrote is a JSON object" /usr/bin/python3 - "$STATE_DIR/$svc.log" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
lines = raw.split(b"\n")
assert lines[-1] == b"", "the log does not end with a newline"
bad = 0
for n, l in enumerate(lines[:-1], 1):
    try:
        o = json.loads(l.decode("utf-8"))
        assert isinstance(o, dict) and {"ts", "level", "msg"} <= o.keys()
    except Exception as e:
        bad += 1
        if bad <= 3:
            print(f"{sys.argv[1]}:{n}: {type(e).__name__}: {l[:300]!r}")
print(f"{sys.argv[1]}: {len(lines) - 1} lines, {bad} not JSON, largest {max(map(len, lines))} bytes")
sys.exit(bad != 0)
PY
done
finish
