package blocks

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rnnaudit/rnnaudit/internal/errs"
)

// A problem that an option fixes names the option in DataError.Options, in
// the order of the advice, and Text names it in a program's terms; no
// message of the package holds a command-line flag.
func TestDataErrorOptions(t *testing.T) {
	for _, c := range []struct {
		src  string
		opts *Options
		want []Option
	}{
		{"id,t,x,y\n1,1,0,1\n", &Options{IDCol: "patient"}, []Option{OptIDCol}},
		{"id,t,x,y\n1,1,0,1\n", &Options{IDCol: "t", TimeCol: "t"}, []Option{OptIDCol, OptTimeCol}},
		{"id,t,x,y\n1,1,0,1\n", &Options{Features: []string{"y"}}, []Option{OptFeatures, OptShift}},
		{"id,t,x,y\n1,1,0,1\n", &Options{Targets: []string{"z"}}, []Option{OptTargets}},
		{"id,t,x,y\n1,1,abc,1\n", nil, []Option{OptFeatures}},
		{"id,t,x,y\n1,1,1.5.5,1\n", &Options{Features: []string{"x"}}, nil}, // chosen features: no advice to choose them
		{"id,t,x,y\n1,1,0,1\n1,1,0,2\n", nil, nil},                          // a duplicate step: no option fixes it
	} {
		_, err := Read(strings.NewReader(c.src), "d.csv", c.opts)
		var de *DataError
		if !errors.As(err, &de) {
			t.Fatalf("%q %+v: error %v, want a *DataError", c.src, c.opts, err)
		}
		if !reflect.DeepEqual(de.Options, c.want) {
			t.Errorf("%q %+v: options %v, want %v (%v)", c.src, c.opts, de.Options, c.want, de)
		}
		flag := func(o Option) string { return "--" + strings.ToLower(o.Local()) }
		text := de.Text(errs.Names(flag))
		if strings.Contains(de.Error(), "--") {
			t.Errorf("%q: the message names a flag: %s", c.src, de.Error())
		}
		if len(c.want) > 0 {
			var names, flags []string
			for _, o := range c.want {
				names, flags = append(names, "Options."+strings.TrimPrefix(string(o), "blocks.Options.")), append(flags, flag(o))
			}
			if !strings.HasSuffix(de.Error(), " ("+strings.Join(names, ", ")+")") || !strings.HasSuffix(text, " ("+strings.Join(flags, ", ")+")") {
				t.Errorf("%q: Error %q, Text %q", c.src, de.Error(), text)
			}
		} else if text != de.Error() {
			t.Errorf("%q: Text %q differs from Error %q without options", c.src, text, de.Error())
		}
	}
}
