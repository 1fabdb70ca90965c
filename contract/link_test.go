package contract

import "testing"

// IsNotifyLink knows exactly NotifyLink's names.
func TestIsNotifyLink(t *testing.T) {
	for name, want := range map[string]bool{NotifyLink(0): true, NotifyLink(3): true, ControlLink(0): false, KVLink(0): false,
		"notify/": false, "notify/x": false, "notify/1x": false, LinkRouterDecode: false} {
		if got := IsNotifyLink(name); got != want {
			t.Errorf("IsNotifyLink(%q) = %v, want %v", name, got, want)
		}
	}
}
