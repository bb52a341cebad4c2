package natslog

import (
	"testing"
)

// TestReadAckAgreesWithJSON: the answers read without encoding/json are
// read as encoding/json reads them, and every other answer is decoded in
// full (a near miss of the plain form is never misread).
func TestReadAckAgreesWithJSON(t *testing.T) {
	l := &Log{opts: Options{Stream: "ringcast"}, ackPrefix: ackPrefix("ringcast")}
	for _, c := range []struct {
		data string
		want pubAck
	}{
		{`{"stream":"ringcast","seq":1}`, pubAck{Stream: "ringcast", Seq: 1}},
		{`{"stream":"ringcast","seq":18446744073709551615}`, pubAck{Stream: "ringcast", Seq: 18446744073709551615}},
		{`{"stream":"ringcast","seq":7,"duplicate": true}`, pubAck{Stream: "ringcast", Seq: 7, Duplicate: true}},
		{`{"stream":"ringcast","domain":"hub","seq":7}`, pubAck{Stream: "ringcast", Seq: 7}},
		{`{"stream":"ringcast","seq":9, "duplicate": true,"batch":"b1","count":3}`, pubAck{Stream: "ringcast", Seq: 9, Duplicate: true, BatchID: "b1", Count: 3}},
		{`{"stream":"other","seq":3}`, pubAck{Stream: "other", Seq: 3}},
		{`{"stream":"ringcast","seq":012}`, pubAck{}},
		{`{"stream":"ringcast","seq":}`, pubAck{}},
		{`{"stream":"ringcast","seq":18446744073709551616}`, pubAck{}},
		{`{"stream":"ringcast","seq":5}x`, pubAck{}},
	} {
		got, err := l.readAck([]byte(c.data))
		if c.want == (pubAck{}) {
			if err == nil {
				t.Errorf("%s: read as %+v, want an error", c.data, got)
			}
			continue
		}
		if err != nil || got.Error != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.data, got, err, c.want)
		}
	}
	got, err := l.readAck([]byte(`{"error":{"code":503,"err_code":10077,"description":"no suitable peers"}}`))
	if err != nil || got.Error == nil || got.Error.ErrorCode != 10077 || got.Error.Code != 503 {
		t.Fatalf("an error answer: %+v, %v", got, err)
	}
}
