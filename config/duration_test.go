package config

import (
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "4h", want: 4 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "2d30m", want: 48*time.Hour + 30*time.Minute},
		{in: "", wantErr: true},
		{in: "forever", wantErr: true},
		{in: "-1h", wantErr: true},
		{in: "4", wantErr: true},
		{in: "d", wantErr: true},
		{in: "1..5d", wantErr: true},
		{in: "12h1d", wantErr: true},
		{in: "99999999999d", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTTL(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseTTL(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseTTL(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
