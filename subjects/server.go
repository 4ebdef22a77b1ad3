package subjects

import "encoding/base64"

// The NATS server's own names that jetflow builds: the JetStream API, the
// acknowledgement and flow-control subjects of its consumers, and the
// stream and subjects behind a KV bucket. They follow the server's
// conventions, not the deployment prefix, but are built here so that
// every subject and stream name jetflow uses comes from this package.

// APIPrefix is the JetStream API prefix: "$JS.API.", or "$JS.<domain>.API."
// for a JetStream domain.
func APIPrefix(domain string) string {
	if domain == "" {
		return "$JS.API."
	}
	return "$JS." + domain + ".API."
}

// API is the subject of a JetStream API request: "$JS.API.<verb>", then
// ".<token>" for each token (a stream, a consumer, a subject, a wildcard).
func (n Names) API(verb string, tokens ...string) string {
	s := APIPrefix("") + verb
	for _, t := range tokens {
		s += "." + t
	}
	return s
}

// Ack matches the acknowledgement subjects (acks, naks, heartbeats) of
// the messages one consumer of stream delivers.
func (n Names) Ack(stream, consumer string) string {
	return "$JS.ACK." + stream + "." + consumer + ".>"
}

// FlowControl matches the flow-control replies of the push consumers of
// stream (ordered consumers, KV watches).
func (n Names) FlowControl(stream string) string { return "$JS.FC." + stream + ".>" }

// ObjectStream is the stream that holds Object Store bucket.
func (n Names) ObjectStream(bucket string) string { return "OBJ_" + bucket }

// ObjectSubjects matches the chunk and meta subjects of Object Store
// bucket.
func (n Names) ObjectSubjects(bucket string) string { return "$O." + bucket + ".>" }

// ObjectChunks is the subject of the chunks of the object whose NUID (in
// its info) is nuid, in Object Store bucket.
func (n Names) ObjectChunks(bucket, nuid string) string { return "$O." + bucket + ".C." + nuid }

// ObjectMeta is the subject of the info (meta message) of the object
// named name in Object Store bucket: the name in URL-safe base64, as the
// client libraries write it.
func (n Names) ObjectMeta(bucket, name string) string {
	return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// KVStream is the stream that holds KV bucket.
func (n Names) KVStream(bucket string) string { return "KV_" + bucket }

// KVKeyPrefix is the subject prefix of bucket's keys: a key's subject is
// the prefix followed by the key.
func (n Names) KVKeyPrefix(bucket string) string { return "$KV." + bucket + "." }

// KVKey is the subject of key (or key pattern) in bucket.
func (n Names) KVKey(bucket, key string) string { return n.KVKeyPrefix(bucket) + key }

// KVKeys matches every key of bucket.
func (n Names) KVKeys(bucket string) string { return n.KVKey(bucket, ">") }

// RunToken is the run id token of a run-input subject, without parsing or
// checking the rest: what groups a run's inputs. A subject that is not a
// run input of the prefix, or names no run, gives itself behind a NUL
// byte, which no run id holds, so that it groups with nothing else.
func (n Names) RunToken(subject string) string {
	prefix, rest := n.prefix, subject
	if len(rest) > len(prefix)+4 && rest[:len(prefix)] == prefix && rest[len(prefix):len(prefix)+4] == ".in." {
		rest = rest[len(prefix)+4:]
		for i := 0; i < len(rest); i++ {
			if rest[i] == '.' {
				return rest[:i]
			}
		}
	}
	return "\x00" + subject
}
