package cli

import (
	"flag"
	"slices"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.Bool("quiet", false, "")
	fs.String("backend", "", "")
	for _, tt := range []struct{ args, want []string }{
		{[]string{"a.txt", "--quiet", "b.txt"}, []string{"--quiet", "a.txt", "b.txt"}},
		{[]string{"a.txt", "--backend", "postgres", "b.txt"}, []string{"--backend", "postgres", "a.txt", "b.txt"}},
		{[]string{"a.txt", "--backend=postgres"}, []string{"--backend=postgres", "a.txt"}},
		{[]string{"a.txt", "--quiet=false", "-"}, []string{"--quiet=false", "a.txt", "-"}},
		{[]string{"a.txt", "--", "--quiet"}, []string{"--", "a.txt", "--quiet"}},
		{[]string{"a.txt", "--nope", "b.txt"}, []string{"--nope", "a.txt", "b.txt"}},
		{[]string{"a.txt", "--backend"}, []string{"--backend", "a.txt"}},
	} {
		if got := flagsFirst(fs, tt.args); !slices.Equal(got, tt.want) {
			t.Errorf("flagsFirst(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
