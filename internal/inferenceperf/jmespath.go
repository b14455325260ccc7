package inferenceperf

import (
	"errors"
	"fmt"

	"github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// jmesExpr is one of inference-perf's circuit-breaker expressions (a
// breaker's matches and rules), compiled and evaluated by the JMESPath
// Community library. inference-perf evaluates them with Python's jmespath,
// which implements the JMESPath specification; the Community edition adds
// to it (arithmetic, let and its variables, the root $, functions the
// specification lacks), and those additions are refused when the
// configuration is read, so that a file glassbox runs is one inference-perf
// runs the same way.
type jmesExpr struct{ q jmespath.JMESPath }

func compileJMES(src string) (*jmesExpr, error) {
	ast, err := parsing.NewParser().Parse(src)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	if err := specOnly(ast); err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	q, err := jmespath.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	return &jmesExpr{q}, nil
}

// eval is the expression's value on doc; an evaluation error (a function
// given the wrong type) is null, which no breaker counts.
func (e *jmesExpr) eval(doc any) any {
	v, err := e.q.Search(doc)
	if err != nil {
		return nil
	}
	return v
}

// specFunctions are the built-in functions of the JMESPath specification,
// which Python's jmespath has.
var specFunctions = map[string]bool{
	"abs": true, "avg": true, "ceil": true, "contains": true, "ends_with": true, "floor": true, "join": true,
	"keys": true, "length": true, "map": true, "max": true, "max_by": true, "merge": true, "min": true,
	"min_by": true, "not_null": true, "reverse": true, "sort": true, "sort_by": true, "starts_with": true,
	"sum": true, "to_array": true, "to_number": true, "to_string": true, "type": true, "values": true,
}

// specOnly refuses what the Community edition adds to the specification.
func specOnly(n parsing.ASTNode) error {
	switch n.NodeType {
	case parsing.ASTArithmeticExpression, parsing.ASTArithmeticUnaryExpression:
		return errors.New("arithmetic is JMESPath Community's, not the specification inference-perf's jmespath implements")
	case parsing.ASTLetExpression, parsing.ASTVariable, parsing.ASTBindings, parsing.ASTBinding:
		return errors.New("let and variables are JMESPath Community's, not the specification inference-perf's jmespath implements")
	case parsing.ASTRootNode:
		return errors.New("the root node $ is JMESPath Community's, not the specification inference-perf's jmespath implements")
	case parsing.ASTFunctionExpression:
		if name, _ := n.Value.(string); !specFunctions[name] {
			return fmt.Errorf("%s() is not a function of the JMESPath specification inference-perf's jmespath implements", name)
		}
	}
	for _, c := range n.Children {
		if err := specOnly(c); err != nil {
			return err
		}
	}
	return nil
}

// truthy is JMESPath's: false, null, "", [] and {} are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
