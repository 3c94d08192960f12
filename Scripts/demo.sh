#!/usr/bin/env bash
# `make demo`: the main job as it exists now. Starts the mock gateway with strict auth and the
# push specs, sends real pushes at it (APNs over TLS with an ES256 JWT; FCM over HTTP/1.1 and
# HTTP/2 after an OAuth exchange; a token that is gone; the reference sender fanning out a
# poolse group call), then shows what was recorded and how it judged; last, `pushproof run` plays
# scenarios (a golden one, the same with a wrong expectation, a generated 10,000-person call).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PUSHPROOF="${PUSHPROOF:-$PWD/.build/release/pushproof}"
OUT="${DEMO_OUT:-$PWD/out/demo}"
rm -rf "$OUT" && mkdir -p "$OUT"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
SERVE_PID=""
cleanup() { [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true; }
trap cleanup EXIT

say "Credentials: a test APNs .p8 key and provider certificate, a Google service account, and a gateway config trusting them"
"$PUSHPROOF" credentials --out "$OUT/credentials" --bundle-id com.example.loop \
  --bundle-id com.example.yama.tenant --bundle-id com.example.shop --project poolse-example

# The reference sender sends every product's FCM pushes with its one service account, so to
# one Firebase project: Concierge lists poolse's project too (a project may hold several apps).
echo '{"concierge": {"fcm_project": ["concierge-example", "poolse-example"]}}' > "$OUT/spec-config.json"

say "Start the mock gateway: TLS, strict auth, specs judged live, every request recorded"
mkfifo "$OUT/ready"
(cd "$OUT" && exec "$PUSHPROOF" serve --listen 127.0.0.1:0 --admin 127.0.0.1:0 --config credentials/gateway.json \
   --specs "$ROOT/Specs" --spec-config spec-config.json --record record.jsonl > ready 2> serve.log) &
SERVE_PID=$!
read -r READY < "$OUT/ready"
echo "$READY"
PORT=$(sed -n 's/.*ready https:\/\/127.0.0.1:\([0-9]*\).*/\1/p' <<< "$READY")
ADMIN=$(sed -n 's/.*admin http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' <<< "$READY")
GW="https://127.0.0.1:$PORT"
CERT="$OUT/$(sed -n 's/.* cert \([^ ]*\).*/\1/p' <<< "$READY")"   # pushproof-cert-<port>.pem, named on the ready line
CURL=(curl -sS --cacert "$CERT")
TOKEN_A=$(printf 'a1%.0s' {1..32})   # a valid device token
TOKEN_GONE=$(printf 'b2%.0s' {1..32}) # a device whose app was uninstalled

say "APNs over TLS (h2) with an ES256 provider token: a poolse ring to a VoIP token"
JWT=$("$PUSHPROOF" token apns --key "$OUT/credentials/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456)
RING='{"cv":"1","type":"call","event":"ring","call_id":"4a69c1","conversation_id":"6f1c2d","conversation_name":"Engineering","caller_user_id":"2b7e3f","caller_external_id":"acme-alice","caller_name":"Alice","media":"video","has_video":true,"ring_deadline":1793952045000,"sent_at":1793952000000,"grant":"eyJhbGciOi"}'
echo "curl --http2 -H 'authorization: bearer ${JWT:0:24}…' -H 'apns-push-type: voip' -H 'apns-topic: com.example.loop.voip' …"
"${CURL[@]}" -i --http2 -H "authorization: bearer $JWT" -H 'apns-push-type: voip' -H 'apns-topic: com.example.loop.voip' \
  -H 'apns-priority: 10' -H 'apns-expiration: 0' -d "$RING" "$GW/3/device/$TOKEN_A"

say "The same push with a forged token (signed by another key): 403 InvalidProviderToken"
FORGED=$(openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null > "$OUT/other.p8" && \
         "$PUSHPROOF" token apns --key "$OUT/other.p8" --key-id ABC123DEFG --team-id TEAM123456)
"${CURL[@]}" --http2 -H "authorization: bearer $FORGED" -H 'apns-push-type: voip' -H 'apns-topic: com.example.loop.voip' \
  -H 'apns-priority: 10' -H 'apns-expiration: 0' -d "$RING" "$GW/3/device/$TOKEN_A"; echo

say "The same push with no credential at all (no authorization header, no client certificate): 403 MissingProviderToken"
"${CURL[@]}" --http2 -H 'apns-push-type: voip' -H 'apns-topic: com.example.loop.voip' \
  -H 'apns-priority: 10' -H 'apns-expiration: 0' -d "$RING" "$GW/3/device/$TOKEN_A"; echo

say "The same push with a provider certificate instead of a token (certificate-based trust), then with another app's topic"
"${CURL[@]}" --http2 -w '  <- HTTP %{http_code}\n' --cert "$OUT/credentials/apns-cert.pem" --key "$OUT/credentials/apns-cert-key.pem" \
  -H 'apns-push-type: voip' -H 'apns-topic: com.example.loop.voip' -H 'apns-priority: 10' -H 'apns-expiration: 0' \
  -d "$RING" "$GW/3/device/$TOKEN_A"
"${CURL[@]}" --http2 --cert "$OUT/credentials/apns-cert.pem" --key "$OUT/credentials/apns-cert-key.pem" \
  -H 'apns-push-type: alert' -H 'apns-topic: com.example.shop' -d '{"aps":{"alert":"hi"}}' "$GW/3/device/$TOKEN_A"; echo

say "A token that is gone (set through the control API): APNs 410 Unregistered with a timestamp"
curl -sS -X PUT -d '{"state":"gone","since_ms":1793951000000}' "http://127.0.0.1:$ADMIN/tokens/$TOKEN_GONE"
MISSED='{"aps":{"alert":{"title":"Alice","body":"Missed voice call"},"sound":"default","category":"poolse_missed_call","thread-id":"6f1c2d"},"cv":"1","type":"call_missed","event":"missed","call_id":"4a69c1","conversation_id":"6f1c2d","conversation_name":"","caller_user_id":"2b7e3f","caller_name":"Alice","media":"audio","sent_at":1793952045000,"body":{"type":"call_missed","call_id":"4a69c1","conversation_id":"6f1c2d","media":"audio","caller_user_id":"2b7e3f"}}'
"${CURL[@]}" -i --http2 -H "authorization: bearer $JWT" -H 'apns-push-type: alert' -H 'apns-topic: com.example.loop' \
  -H 'apns-collapse-id: missed-4a69c1' -H 'apns-expiration: 1794038445' -d "$MISSED" "$GW/3/device/$TOKEN_GONE"; echo

say "FCM: OAuth exchange (RS256 assertion -> access token), then sends over HTTP/1.1 and HTTP/2"
ASSERTION=$("$PUSHPROOF" token fcm-assertion --service-account "$OUT/credentials/service-account.json")
ACCESS=$("${CURL[@]}" --http1.1 -d "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=$ASSERTION" "$GW/token" \
         | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
echo "access token: ${ACCESS:0:12}…"
FCM_RING='{"message":{"token":"fcm-device-1","data":{"cv":"1","type":"call","event":"ring","call_id":"4a69c1","conversation_id":"6f1c2d","conversation_name":"Engineering","caller_user_id":"2b7e3f","caller_external_id":"acme-alice","caller_name":"Alice","media":"video","has_video":"1","ring_deadline":"1793952045000","sent_at":"1793952000000","grant":"eyJhbGciOi"},"android":{"priority":"HIGH","ttl":"60s"}}}'
for version in --http1.1 --http2; do
  "${CURL[@]}" $version -w "  <- HTTP %{http_version} %{http_code}\n" -H "authorization: Bearer $ACCESS" \
    -H 'content-type: application/json' -d "$FCM_RING" "$GW/v1/projects/poolse-example/messages:send"
done
say "An Android push with a number where FCM needs a string: Google's 400, and a spec finding"
"${CURL[@]}" --http2 -H "authorization: Bearer $ACCESS" -H 'content-type: application/json' -d "${FCM_RING/\"sent_at\":\"1793952000000\"/\"sent_at\":1793952000000}" \
  "$GW/v1/projects/poolse-example/messages:send"; echo

say "A second provider token for the same team minutes after the first: 429 TooManyProviderTokenUpdates"
# Apple counts a team's token updates across every connection: a process that signs its own
# token while another's is under 20 minutes old is refused. POST /reset forgets the count, so
# the reference sender below (a new process, its own token) starts as the team's first.
SECOND_JWT=$("$PUSHPROOF" token apns --key "$OUT/credentials/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456)
"${CURL[@]}" --http2 -w "  <- HTTP %{http_code}\n" -H "authorization: bearer $SECOND_JWT" -H 'apns-push-type: voip' \
  -H 'apns-topic: com.example.loop.voip' -H 'apns-priority: 10' -H 'apns-expiration: 0' -d "$RING" "$GW/3/device/$TOKEN_A"
curl -s -o /dev/null -X POST "http://127.0.0.1:$ADMIN/reset"

say "The reference sender: a poolse group call rung on every member's devices, gone tokens cleaned up"
"$PUSHPROOF" send demo --apns "$GW" --fcm "$GW" --ca "$CERT" \
    --apns-key "$OUT/credentials/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 \
    --service-account "$OUT/credentials/service-account.json" --token-url "$GW/token" \
    --admin "http://127.0.0.1:$ADMIN" --devices "$OUT/devices.sqlite" \
    --yama-bundle-id com.example.yama.tenant --concierge-bundle-id com.example.shop

say "The driver: a 2,000-member group call rung 3 times; latency, time to ring all, a threshold; HTML report"
"$PUSHPROOF" drive ring-fanout --members 2000 --count 3 --gateway "$GW" --ca "$CERT" \
    --apns-key "$OUT/credentials/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 \
    --service-account "$OUT/credentials/service-account.json" --token-url "$GW/token" \
    --admin "http://127.0.0.1:$ADMIN" --gone-tokens 20 --connections 2 \
    --threshold 'time_to_ring_all_ms<10000' --threshold 'error_rate<0.01' \
    --html "$OUT/load.html" --junit "$OUT/load.xml" --json "$OUT/load.json"
echo "(HTML report: $OUT/load.html)"

say "Capacity plan: which set-up rings every phone of a 2,000-member group within a second?"
set +e
"$PUSHPROOF" plan --members 2000 --within-ms 1000 --try-connections 1,2 --calls 2 --gateway "$GW" --ca "$CERT" \
    --apns-key "$OUT/credentials/apns-key.p8" --key-id ABC123DEFG --team-id TEAM123456 \
    --service-account "$OUT/credentials/service-account.json" --token-url "$GW/token" --json "$OUT/plan.json"
echo "(pushproof plan exit status $?: 0 a set-up meets the target, 3 none does on this machine)"
set -e

say "Metrics (Prometheus text, control API)"
curl -sS "http://127.0.0.1:$ADMIN/metrics" | grep -E '^pushproof_(requests_total|auth_failures_total|spec_violations_total|spec_unmatched)' | head -24

say "Stop the gateway (SIGTERM): the record is flushed"
kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || true; SERVE_PID=""
cat "$OUT/serve.log"

say "What was recorded ($OUT/record.jsonl)"
"$PUSHPROOF" show "$OUT/record.jsonl" --last 25

say "Why credentials were refused: the gateway's own explanation, response.detail (never sent to the client)"
grep -o '"reason":"[A-Za-z_]*","detail":"[^"]*"' "$OUT/record.jsonl" | sort | uniq -c || true

say "Conformance: every recorded push judged against Specs/ (JUnit: $OUT/conformance.xml)"
set +e
"$PUSHPROOF" check "$OUT/record.jsonl" --specs Specs --spec-config "$OUT/spec-config.json" --junit "$OUT/conformance.xml" --json "$OUT/conformance.json" --max-failures 2
status=$?
set -e
echo "(pushproof check exit status $status: the demo sent two non-conforming pushes on purpose: the Android number and the certificate push to another app's topic)"

say "pushproof run: a golden scenario played through the reference sender against an embedded gateway, every event judged"
"$PUSHPROOF" run Specs/scenarios/poolse-02-answered-elsewhere.json

say "The same scenario with one wrong expectation: Bob's ring_ended expected on his iPhone's alert token, not on his Android phone"
python3 - Specs/scenarios/poolse-02-answered-elsewhere.json "$OUT/wrong-expectation.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
delivery = scenario["expect"][1]["deliveries"][0]
assert delivery["device"] == "b-android"
delivery["device"] = "b-ios"
json.dump(scenario, open(sys.argv[2], "w"), indent=1)
print('expect[1].deliveries[0].device: "b-android" -> "b-ios"')
PY
set +e
"$PUSHPROOF" run "$OUT/wrong-expectation.json"
status=$?
set -e
echo "(pushproof run exit status $status: 1 is expected here, the scenario's expectation is wrong on purpose)"
[ "$status" = 1 ]

say "Your own sender under test: teamsender, a Python sender (examples/python-sender), behind the adapter protocol"
"$PUSHPROOF" run Specs/scenarios/yama-02-dnd.json Specs/scenarios/poolse-25-gone-token.json --sender-dir . \
    --sender-cmd "python3 examples/python-sender/adapter.py"

say "The same sender with a seeded bug (PUSHPROOF_EXAMPLE_BUG=dnd-notified): a member in Do Not Disturb is notified"
set +e
"$PUSHPROOF" run Specs/scenarios/yama-02-dnd.json --sender-dir . \
    --sender-cmd "PUSHPROOF_EXAMPLE_BUG=dnd-notified python3 examples/python-sender/adapter.py"
status=$?
set -e
echo "(pushproof run exit status $status: 1 is expected here, the sender's bug is caught)"
[ "$status" = 1 ]

say "Your own app, no expect: the reference rules say what each push must carry, and a wrong title is caught"
python3 - Specs/scenarios/concierge-01-team-names-on.json "$OUT/own-app.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
del scenario["expect"]
scenario["app"] = {"bundle_id": "com.acme.shop", "fcm_project": "acme-shop"}
json.dump(scenario, open(sys.argv[2], "w"), indent=1)
print('app: com.acme.shop / acme-shop, expect removed')
PY
"$PUSHPROOF" run "$OUT/own-app.json" --sender-dir . --sender-cmd "python3 examples/python-sender/adapter.py"
set +e
"$PUSHPROOF" run "$OUT/own-app.json" --quiet --sender-dir . \
    --sender-cmd "PUSHPROOF_EXAMPLE_BUG=app-name-title python3 examples/python-sender/adapter.py"
status=$?
set -e
echo "(pushproof run exit status $status: 1 is expected here, the title says the app's name where the rules say the team member's)"
[ "$status" = 1 ]

say "A scenario as load: drive --scenario plays 40 messages to a generated 200-person group at 20 messages/s"
python3 - Benchmarks/scenarios/message-storm-1000.json "$OUT/storm-200.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["generate"]["people"] = 200
scenario["events"] = [event for event in scenario["events"] if int(event["sender"][1:]) < 200][:40]
scenario["description"] = "The storm of Benchmarks/scenarios/message-storm-1000.json, cut to 200 people and 40 messages"
json.dump(scenario, open(sys.argv[2], "w"), indent=1)
PY
"$PUSHPROOF" drive --scenario "$OUT/storm-200.json" --rate 20 --json "$OUT/storm.json"
echo "(JSON report: $OUT/storm.json)"

say "A generated 10,000-person group call (\"generate\": people, device mix, 2% gone tokens): ring, one answer, the end"
"$PUSHPROOF" run Benchmarks/scenarios/group-call-10000.json --timing --html "$OUT/run.html"
echo "(HTML report: $OUT/run.html)"
