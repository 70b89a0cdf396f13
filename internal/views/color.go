package views

// Colorizer wraps text in ANSI colours when enabled.
type Colorizer struct{ Enabled bool }

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiRed    = "\x1b[31m"
	ansiCyan   = "\x1b[36m"
)

func (c Colorizer) wrap(code, s string) string {
	if !c.Enabled || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (c Colorizer) Bold(s string) string   { return c.wrap(ansiBold, s) }
func (c Colorizer) Green(s string) string  { return c.wrap(ansiGreen, s) }
func (c Colorizer) Yellow(s string) string { return c.wrap(ansiYellow, s) }
func (c Colorizer) Red(s string) string    { return c.wrap(ansiRed, s) }
func (c Colorizer) Cyan(s string) string   { return c.wrap(ansiCyan, s) }
