package views

import "github.com/sandboxer/sandboxer/plan"

// actionWords is how each action is named in progress lines and tables.
type actionWords struct {
	progress string // "Creating"
	ongoing  string // "creating", after "Still"
	done     string // "Creation", before "complete"/"failed"
	mark     string // the markdown table's icon
	word     string // the markdown table's action column
}

func wordsFor(a plan.Action) actionWords {
	switch a {
	case plan.Create:
		return actionWords{"Creating", "creating", "Creation", "➕", "create"}
	case plan.CreateThenDelete:
		return actionWords{"Replacing (new before old)", "replacing", "Replacement", "🔁", "**replace**"}
	case plan.Delete:
		return actionWords{"Destroying", "destroying", "Destruction", "➖", "destroy"}
	case plan.Forget:
		return actionWords{"Forgetting", "forgetting", "Forgetting", "✂️", "forget"}
	}
	return actionWords{"Reusing", "working", "Reuse", "♻️", "reuse"}
}
