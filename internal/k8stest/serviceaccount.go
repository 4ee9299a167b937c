package k8stest

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceAccountToken creates role, a service account of the same name and
// namespace and a RoleBinding of the one to the other, and returns an
// hour-long token of the account from the TokenRequest API: the API
// server's RBAC authorizer judges every request made with it, as in a
// cluster whose RBAC was written by hand.
func (c *Cluster) ServiceAccountToken(role *rbacv1.Role) string {
	c.t.Helper()
	ctx := c.t.Context()
	ns, name := role.Namespace, role.Name
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	hour := int64(3600)
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return tok.Status.Token
}
