package state

import (
	"reflect"
	"strings"
	"testing"
)

// TestViewCannotWrite: what Store.View hands its function has none of
// Tx's writing methods, so a write inside View does not compile. (When
// View handed out a *Tx, such a write compiled and was silently dropped.)
func TestViewCannotWrite(t *testing.T) {
	given := reflect.TypeOf((*Store).View).In(1).In(0)
	tx := reflect.TypeFor[*Tx]()
	writes := 0
	for i := range tx.NumMethod() {
		name := tx.Method(i).Name
		if !strings.HasPrefix(name, "Put") && !strings.HasPrefix(name, "Delete") {
			continue
		}
		writes++
		if _, ok := given.MethodByName(name); ok {
			t.Errorf("Store.View hands out %v, which has the writing method %s", given, name)
		}
	}
	if writes == 0 {
		t.Fatal("Tx has no Put or Delete method: this test checks nothing")
	}
}
